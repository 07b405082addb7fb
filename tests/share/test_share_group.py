"""KIP-932 share groups on a fake clock: ShareGroupHeartbeat through the coordinator's state
machine (no sockets, no sleeps) and the simple assignor."""
from __future__ import annotations

import uuid

from kwire.clock import FakeClock
from kwire.errors import ErrorCode as E
from kwire.groups import GroupConfig, GroupCoordinator
from kwire.groups.share_group import simple_assign

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


class Coord:
    def __init__(self, topics=None, **cfg):
        self.clock = FakeClock()
        self.topics = topics if topics is not None else {"t": (T1, 1)}
        config = GroupConfig(share_session_timeout_ms=1000, share_heartbeat_interval_ms=100, **cfg)
        self.coord = GroupCoordinator(config, self.clock, lambda p, recs, done, **kw: done(E.NONE))
        self.coord.topic_metadata = lambda: self.topics

    def hb(self, member, epoch, topics=("t",), group="sg"):
        p = self.coord.share_group_heartbeat(group, member, epoch,
                                             subscribed_topic_names=list(topics) if topics is not None else None)
        assert p.done
        return p.result

    def advance(self, ms):
        self.clock.advance(ms)
        self.coord.tick()


def test_simple_assignor_shares_a_partition_and_spreads_many():
    one = simple_assign({"a": frozenset({T1}), "b": frozenset({T1}), "c": frozenset({T1})}, {T1: 1})
    assert one == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({0})}, "c": {T1: frozenset({0})}}
    many = simple_assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 5})
    assert many == {"a": {T1: frozenset({0, 2, 4})}, "b": {T1: frozenset({1, 3})}}
    three_two = simple_assign({m: frozenset({T1}) for m in "abc"}, {T1: 2})
    assert [three_two[m][T1] for m in "abc"] == [{0}, {1}, {0}]
    mixed = simple_assign({"a": frozenset({T1, T2}), "b": frozenset({T2})}, {T1: 1, T2: 2})
    assert mixed == {"a": {T1: frozenset({0}), T2: frozenset({0})}, "b": {T2: frozenset({1})}}


def test_three_members_share_one_partition_with_epochs():
    c = Coord()
    r = c.hb("a", 0)
    assert (r.error, r.member_epoch, r.assignment, r.heartbeat_interval_ms) == (E.NONE, 1, {T1: frozenset({0})}, 100)
    assert c.hb("b", 0).member_epoch == 2
    assert c.hb("c", 0).member_epoch == 3
    # a steady heartbeat: epoch moves to the group's, no assignment when unchanged
    r = c.hb("a", 1, topics=None)
    assert (r.error, r.member_epoch, r.assignment) == (E.NONE, 3, None)
    d = c.coord.describe_share_groups(["sg", "nope"])
    assert (d[0].state, d[0].group_epoch, len(d[0].members)) == ("Stable", 3, 3)
    assert d[1].error == E.GROUP_ID_NOT_FOUND
    assert [x.group_type for x in c.coord.list_groups() if x.group_id == "sg"] == ["share"]


def test_errors_leave_and_session_timeout():
    c = Coord()
    assert c.hb("", 0).error == E.INVALID_REQUEST
    assert c.hb("a", 0, topics=()).error == E.INVALID_REQUEST
    assert c.hb("a", -2).error == E.INVALID_REQUEST
    assert c.hb("a", 3).error == E.UNKNOWN_MEMBER_ID
    c.hb("a", 0)
    c.hb("b", 0)
    assert c.hb("a", 7, topics=None).error == E.FENCED_MEMBER_EPOCH
    r = c.hb("a", -1)
    assert (r.error, r.member_epoch) == (E.NONE, -1)
    assert c.coord.share_group("sg").group_epoch == 3
    c.advance(600)
    r = c.hb("b", 2, topics=None)
    assert (r.error, r.member_epoch) == (E.NONE, 3)
    c.advance(600)   # b heartbeated 600 ms ago: alive
    assert "b" in c.coord.share_group("sg").members
    c.advance(500)
    assert not c.coord.share_group("sg").members
    assert c.coord.describe_share_groups(["sg"])[0].state == "Empty"


def test_max_size_and_group_kinds():
    c = Coord(share_max_size=1)
    c.hb("a", 0)
    assert c.hb("b", 0).error == E.GROUP_MAX_SIZE_REACHED
    # a consumer group's id is not a share group's
    c.coord.consumer_group_heartbeat("cg", "m", 0, rebalance_timeout_ms=100, subscribed_topic_names=["t"])
    assert c.hb("x", 0, group="cg").error == E.GROUP_ID_NOT_FOUND


def test_new_partitions_bump_the_epoch():
    c = Coord()
    c.hb("a", 0)
    c.hb("b", 0)
    c.topics = {"t": (T1, 2)}
    r = c.hb("a", 1, topics=None)
    assert (r.member_epoch, r.assignment) == (3, None)   # its partitions did not change
    r = c.hb("b", 2, topics=None)
    assert (r.member_epoch, r.assignment) == (3, {T1: frozenset({1})})


def test_membership_records_replay_to_the_same_group():
    from kwire.groups import share_records as SHR
    from kwire.groups.loader import PartitionLoad

    log: list = []
    c = Coord()
    c.coord.writer = lambda p, recs, done, **kw: (log.extend(recs), done(E.NONE))
    c.hb("a", 0)
    c.hb("b", 0)
    c.hb("a", 1, topics=None)
    c.hb("b", -1)
    load = PartitionLoad(0)
    for k, v in log:
        load.replay(k, v)
    sg = load.share_groups["sg"]
    assert sg.group_epoch == 3 and list(sg.members) == ["a"]
    assert (sg.members["a"].member_epoch, sg.members["a"].subscribed_topic_names) == (2, ("t",))
    SHR.finish_load(sg, c.topics)
    assert sg.target == {"a": {T1: frozenset({0})}} and sg.assignment_epoch == 3
    # a deleted group is a tombstone
    c.hb("a", -1)
    assert c.coord.delete_share_group("sg") == E.NONE
    load = PartitionLoad(0)
    for k, v in log:
        load.replay(k, v)
    assert "sg" not in load.share_groups


def test_a_share_group_id_is_not_a_classic_or_consumer_group():
    c = Coord()
    c.hb("a", 0)
    p = c.coord.consumer_group_heartbeat("sg", "m", 0, rebalance_timeout_ms=100, subscribed_topic_names=["t"])
    assert p.result.error == E.GROUP_ID_NOT_FOUND
    p = c.coord.join_group("sg", "", protocol_type="consumer", protocols=[("range", b"")],
                           session_timeout_ms=10_000)
    assert p.result.error == E.GROUP_ID_NOT_FOUND
    assert "sg" not in c.coord.groups

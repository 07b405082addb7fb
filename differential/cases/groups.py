"""Classic groups (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch,
DescribeGroups, LeaveGroup) and KIP-848 ConsumerGroupHeartbeat: the happy path and wrong
generations, unknown members, unknown groups, bad session timeouts, commits to unknown partitions."""
from __future__ import annotations

import uuid

from hypothesis import strategies as st

from kwire.codec import consumer_protocol as cp

from differential.run import Family
from differential.session import S, Session

V = st.integers(0, 10_000)   # a version draw (Session.version turns it into one both serve)


def subscription(topic: str) -> bytes:
    return cp.encode_subscription(cp.SUBSCRIPTION.cls(topics=[topic], user_data=None), 1)


def assignment(topic: str) -> bytes:
    TP = cp.ASSIGNMENT.struct("TopicPartition")
    return cp.encode_assignment(cp.ASSIGNMENT.cls(assigned_partitions=[TP(topic=topic, partitions=[0, 1])],
                                                  user_data=None), 1)


def classic(s: Session, p) -> None:
    (vfind, vjoin, vsync, vhb, vcommit, vfetch, vdesc, vleave, session_ms, hb_kind, commit_kind, fetch_kind,
     instance) = p
    topic, group = s.topic("a"), s.group()
    s.create_topic(topic, 2)
    s.wait_coordinator(group)
    v = s.version("FindCoordinator", vfind)
    if v >= 4:
        s.call("FindCoordinator", v, key_type=0, coordinator_keys=[group])
    else:
        s.call("FindCoordinator", v, key=group, key_type=0)
    JP = S("JoinGroup", "JoinGroupRequestProtocol")
    vj = s.version("JoinGroup", vjoin)
    join = dict(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=5000, member_id="",
                protocol_type="consumer", protocols=[JP(name="range", metadata=subscription(topic))])
    if vj >= 5:
        join["group_instance_id"] = "static-1" if instance else None
    body = s.call("JoinGroup", vj, **join)
    if body is None:
        return
    if body.error_code == 79:   # MEMBER_ID_REQUIRED: join again with the id given
        join["member_id"] = body.member_id
        body = s.call("JoinGroup", vj, label="JoinGroup-with-id", **join)
    if body is None or body.error_code:
        return
    member, generation = body.member_id, body.generation_id
    vs = s.version("SyncGroup", vsync)
    SA = S("SyncGroup", "SyncGroupRequestAssignment")
    sync = dict(group_id=group, generation_id=generation, member_id=member,
                assignments=[SA(member_id=member, assignment=assignment(topic))])
    if vs >= 3:
        sync["group_instance_id"] = join.get("group_instance_id")
    if vs >= 5:
        sync["protocol_type"], sync["protocol_name"] = "consumer", "range"
    s.call("SyncGroup", vs, **sync)

    vh = s.version("Heartbeat", vhb)
    hb_member = member if hb_kind != "unknown-member" else "nobody"
    hb_gen = generation + (5 if hb_kind == "bad-generation" else 0)
    hb_group = group if hb_kind != "unknown-group" else s.group("other")
    s.call("Heartbeat", vh, group_id=hb_group, generation_id=hb_gen, member_id=hb_member)

    vc = s.version("OffsetCommit", vcommit)
    CT = S("OffsetCommit", "OffsetCommitRequestTopic")
    CP = S("OffsetCommit", "OffsetCommitRequestPartition")
    parts = [CP(partition_index=0, committed_offset=3, committed_metadata="m"),
             CP(partition_index=1 if commit_kind != "bad-partition" else 9, committed_offset=0, committed_metadata=None)]
    ct = CT(partitions=parts)
    cname = s.topic("missing") if commit_kind == "unknown-topic" else topic
    if vc >= 10:
        ct.topic_id = s.topic_id(cname) if commit_kind != "unknown-topic" else uuid.UUID(int=77)
    else:
        ct.name = cname
    gen, mem = {"ok": (generation, member), "bad-generation": (generation + 3, member),
                "unknown-member": (generation, "nobody"), "simple": (-1, ""),
                "unknown-topic": (generation, member), "bad-partition": (generation, member)}[commit_kind]
    s.call("OffsetCommit", vc, group_id=group, generation_id_or_member_epoch=gen, member_id=mem,
           group_instance_id=join.get("group_instance_id") if vc >= 7 else None, topics=[ct])

    vf = s.version("OffsetFetch", vfetch)
    fgroup = group if fetch_kind != "unknown-group" else s.group("other")
    if vf >= 8:
        FT = S("OffsetFetch", "OffsetFetchRequestTopics")
        FG = S("OffsetFetch", "OffsetFetchRequestGroup")
        topics = None if fetch_kind == "all" else [FT(partition_indexes=[0, 1, 5])]
        if topics:
            if vf >= 10:
                topics[0].topic_id = s.topic_id(topic)
            else:
                topics[0].name = topic
        s.call("OffsetFetch", vf, groups=[FG(group_id=fgroup, topics=topics)], require_stable=True)
    else:
        FT = S("OffsetFetch", "OffsetFetchRequestTopic")
        topics = None if fetch_kind == "all" and vf >= 2 else [FT(name=topic, partition_indexes=[0, 1, 5])]
        fields = dict(group_id=fgroup, topics=topics)
        if vf >= 7:
            fields["require_stable"] = True
        s.call("OffsetFetch", vf, **fields)

    vd = s.version("DescribeGroups", vdesc)
    s.call("DescribeGroups", vd, groups=[group, s.group("other")])
    vl = s.version("LeaveGroup", vleave)
    if vl >= 3:
        MI = S("LeaveGroup", "MemberIdentity")
        s.call("LeaveGroup", vl, group_id=group, members=[MI(member_id=member,
                                                               group_instance_id=join.get("group_instance_id"))])
    else:
        s.call("LeaveGroup", vl, group_id=group, member_id=member)
    s.call("DescribeGroups", vd, label="DescribeGroups-after-leave", groups=[group])


classic_st = st.tuples(V, V, V, V, V, V, V, V, st.sampled_from([10000, 10000, 1, 10**8]),
                       st.sampled_from(["ok", "ok", "unknown-member", "bad-generation", "unknown-group"]),
                       st.sampled_from(["ok", "ok", "bad-generation", "unknown-member", "simple", "unknown-topic",
                                        "bad-partition"]),
                       st.sampled_from(["group", "group", "unknown-group", "all"]), st.booleans())


def consumer_protocol(s: Session, p) -> None:
    """KIP-848: join with epoch 0, heartbeat at the epoch given, then wrong epochs and unknown members, leave."""
    vdraw, bad_epoch, regex, assignor = p
    v = s.version("ConsumerGroupHeartbeat", vdraw)
    topic, group = s.topic("a"), s.group()
    s.create_topic(topic, 2)
    fields = dict(group_id=group, member_id=str(uuid.UUID(int=s.n + 1)), member_epoch=0, rebalance_timeout_ms=5000,
                  subscribed_topic_names=[topic], server_assignor=assignor, topic_partitions=[])
    if regex and v >= 1:
        fields["subscribed_topic_names"], fields["subscribed_topic_regex"] = None, f"{topic}.*"
    body = s.call("ConsumerGroupHeartbeat", v, **fields)
    if body is None or body.error_code:
        return
    epoch = body.member_epoch
    s.call("ConsumerGroupHeartbeat", v, label="CGH-wrong-epoch", group_id=group, member_id=fields["member_id"],
           member_epoch=epoch + bad_epoch)
    s.call("ConsumerGroupHeartbeat", v, label="CGH-unknown-member", group_id=group,
           member_id=str(uuid.UUID(int=999)), member_epoch=1)
    s.call("ConsumerGroupHeartbeat", v, label="CGH-leave", group_id=group, member_id=fields["member_id"],
           member_epoch=-1)


consumer_protocol_st = st.tuples(V, st.sampled_from([1, 5, -2]), st.booleans(),
                                 st.sampled_from([None, None, "uniform", "range", "no-such-assignor"]))


FAMILIES = [
    Family("groups", classic_st, classic, examples=120, ci_examples=10),
    Family("consumer_group", consumer_protocol_st, consumer_protocol, examples=30, ci_examples=4),
]

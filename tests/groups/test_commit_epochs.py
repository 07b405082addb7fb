"""KIP-1251 (Kafka 4.3): an offset commit from a consumer-protocol member is valid when its epoch
lies between the partition's assignment epoch and the member epoch (Kafka's
ConsumerGroup.validateOffsetCommit / createAssignmentEpochValidator and
CurrentAssignmentBuilder's per-partition epochs), where 4.0-4.2 wanted the member epoch itself."""
from __future__ import annotations

import pytest

from kwire.errors import ErrorCode as E
from kwire.groups import consumer_records as CR
from kwire.groups.consumer_group import (ClassicMemberMetadata, ConsumerGroupMember, MemberState, reconcile,
                                         validate_commit_epochs)

from test_consumer_group import T1, T2, Cluster, Member, settle

# member epoch 5; t1-0 assigned at 3, t1-1 at 5, t1-2 pending revocation since 2; t1-3 not its own
M = ConsumerGroupMember("m", member_epoch=5, previous_member_epoch=3, state=MemberState.UNREVOKED_PARTITIONS,
                        assigned={T1: frozenset({0, 1})}, pending_revocation={T1: frozenset({2})},
                        assignment_epochs={(T1, 0): 3, (T1, 1): 5, (T1, 2): 2})


def check(m, epoch, *partitions):
    return validate_commit_epochs(m, epoch, [(T1, "t", p) for p in partitions])


def test_the_member_epoch_commits_anything():
    assert check(M, 5, 0, 1, 2, 3) is None


def test_a_newer_epoch_is_refused():
    assert check(M, 6, 0) == "Received member epoch 6 is newer than current member epoch 5."


@pytest.mark.parametrize("epoch,partition,ok", [
    (4, 0, True), (3, 0, True), (2, 0, False),    # assigned at 3
    (4, 1, False),                                # assigned at 5: only epoch 5
    (2, 2, True), (1, 2, False),                  # pending revocation, assigned at 2
    (4, 3, False),                                # not the member's
])
def test_an_older_epoch_commits_partitions_assigned_at_or_before_it(epoch, partition, ok):
    assert (check(M, epoch, partition) is None) is ok


def test_one_refused_partition_refuses_the_commit_with_kafkas_messages():
    assert check(M, 4, 0, 1) == "Received member epoch 4 is older than assignment epoch 5 for partition t-1."
    assert check(M, 4, 0, 3) == "Partition t-3 is not assigned or pending revocation for member."
    assert validate_commit_epochs(M, 4, [(None, "gone", 0)]) == \
        "Partition gone-0 is not assigned or pending revocation for member."
    classic = ConsumerGroupMember("c", member_epoch=5, assigned={T1: frozenset({0})}, assignment_epochs={(T1, 0): 5},
                                  classic=ClassicMemberMetadata(45000, ()))
    assert check(classic, 4, 0) == "Received generation id 4 is older than assignment epoch 5 for partition t-0."


def test_reconciliation_keeps_epochs_of_kept_partitions_and_stamps_new_ones():
    m = ConsumerGroupMember("m", member_epoch=3, assigned={T1: frozenset({0, 1})},
                            assignment_epochs={(T1, 0): 1, (T1, 1): 3})
    # epoch 5 moves t1-1 away (revoke first: epochs kept, nothing new yet)
    r = reconcile(m, 5, {T1: frozenset({0, 2})}, {T1: [0, 1]}, lambda t, p: -1, frozenset({T1}))
    assert r.state is MemberState.UNREVOKED_PARTITIONS and r.member_epoch == 3
    assert dict(r.assignment_epochs) == {(T1, 0): 1, (T1, 1): 3}
    # revoked: t1-2 is new at epoch 5, t1-0 keeps 1
    r = reconcile(r, 5, {T1: frozenset({0, 2})}, {T1: [0]}, lambda t, p: -1, frozenset({T1}))
    assert r.state is MemberState.STABLE and r.member_epoch == 5
    assert dict(r.assignment_epochs) == {(T1, 0): 1, (T1, 2): 5}
    assert r.assignment_epoch(T1, 1) is None


def test_assignment_epochs_survive_the_record_and_default_to_the_member_epoch():
    back = CR.apply_current_value(ConsumerGroupMember("m"), CR.current_value(M))
    assert (back.assigned, back.pending_revocation) == (M.assigned, M.pending_revocation)
    assert dict(back.assignment_epochs) == {(T1, 0): 3, (T1, 1): 5, (T1, 2): 2}
    # a record written before KIP-1251 (no tag 0): every partition as of the member epoch
    old = CR.CURRENT_VALUE(member_epoch=5, previous_member_epoch=3, state=0, partitions_pending_revocation=[],
                           assigned_partitions=[CR._CTP(topic_id=T2, partitions=[4, 7])])
    back = CR.apply_current_value(ConsumerGroupMember("m"), CR._value(CR.CURRENT_VALUE, old))
    assert dict(back.assignment_epochs) == {(T2, 4): 5, (T2, 7): 5}


# ------------------------------------------------------------------ through the coordinator
def commit(c, member, epoch, partitions, api_version=9):
    p = c.coord.commit_offsets("g", epoch, member, [("t", p, 10, -1, None) for p in partitions],
                               api_version=api_version)
    assert p.done
    return set(p.result.errors.values())


def test_a_commit_in_flight_across_a_rebalance_is_accepted_for_partitions_kept():
    c = Cluster()
    a = Member(c, "a")
    settle([a])
    old_epoch, kept_before = a.epoch, {p for _t, p in a.partitions()}
    assert kept_before == set(range(6))
    b = Member(c, "b")
    settle([a, b])
    assert a.epoch > old_epoch
    kept = {p for _t, p in a.partitions()}
    assert kept and kept < kept_before
    # the consumer sent its commit before it saw the new epoch: 4.3 accepts it for what it kept
    assert commit(c, "a", old_epoch, sorted(kept)) == {E.NONE}
    assert commit(c, "a", a.epoch, sorted(kept)) == {E.NONE}
    # ... not for a partition it gave to b, nor one it never had at that epoch
    gone = sorted(kept_before - kept)
    assert commit(c, "a", old_epoch, gone[:1]) == {E.STALE_MEMBER_EPOCH}
    assert commit(c, "b", b.epoch - 1, [gone[0]]) == {E.STALE_MEMBER_EPOCH}
    assert commit(c, "b", b.epoch, [gone[0]]) == {E.NONE}
    # one bad partition refuses the whole commit, as Kafka's validator throws
    assert commit(c, "a", old_epoch, sorted(kept) + gone[:1]) == {E.STALE_MEMBER_EPOCH}
    assert commit(c, "a", a.epoch + 1, sorted(kept)) == {E.STALE_MEMBER_EPOCH}
    assert commit(c, "a", old_epoch, sorted(kept), api_version=8) == {E.UNSUPPORTED_VERSION}


def test_txn_offset_commit_follows_the_same_rule():
    c = Cluster()
    a = Member(c, "a")
    settle([a])
    old_epoch = a.epoch
    b = Member(c, "b")
    settle([a, b])
    kept = sorted(p for _t, p in a.partitions())

    def txn(epoch, partitions):
        p = c.coord.commit_txn_offsets("g", 7, 0, [("t", p, 9, -1, None) for p in partitions],
                                       generation_id=epoch, member_id="a")
        assert p.done
        return set(p.result.errors.values())

    assert txn(old_epoch, kept) == {E.NONE}
    gone = sorted(set(range(6)) - set(kept))
    assert txn(old_epoch, gone[:1]) == {E.STALE_MEMBER_EPOCH}

"""Consumer groups: assignment, rebalance on join and on leave, commit and resume (KIP-62 / the
classic group protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch)."""
import threading
import uuid

from compat_tests.clients import Rec
from compat_tests.helpers import GROUP_APIS, needs, wait_until


def _group():
    return f"compat-g-{uuid.uuid4().hex[:10]}"


def _drive(members, until, timeout=30.0, message="group to settle"):
    """Poll every member continuously, each from its own thread (polling drives joins, heartbeats and
    rebalances, and a member blocked in a JoinGroup must not keep the others from polling), until
    ``until(got)`` holds; ``got`` maps id(member) to the records it received. The pollers stop before
    this returns, so callers may use the members again from this thread."""
    got = {id(m): [] for m in members}
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(m):
        try:
            while not stop.is_set():
                recs = m.poll(0.1)
                with lock:
                    got[id(m)].extend(recs)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in members]
    for t in threads:
        t.start()
    try:
        def check():
            if errors:
                raise errors[0]
            with lock:
                return until(got)

        wait_until(check, timeout, interval=0.05, message=message)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    return got


def test_group_assignment(client, helper, target, topic):
    """A single member subscribed to a topic is assigned every partition of it and consumes all records
    from the beginning (auto.offset.reset=earliest with no committed offset)."""
    needs(client, "groups", target.bootstrap, GROUP_APIS)
    helper.create_topic(topic, 3)
    helper.produce(topic, [Rec(value=f"p{p}-{i}".encode(), partition=p) for p in range(3) for i in range(2)])
    m = client.group_member(_group(), [topic])
    try:
        got = _drive([m], lambda g: m.assignment() == {(topic, p) for p in range(3)} and len(g[id(m)]) >= 6)
        assert sorted(r.value for r in got[id(m)]) == sorted(f"p{p}-{i}".encode() for p in range(3) for i in range(2))
    finally:
        m.close()


def _split(a, b, topic, n):
    sa, sb = a.assignment(), b.assignment()
    return sa and sb and not (sa & sb) and (sa | sb) == {(topic, p) for p in range(n)}


def test_group_rebalance_on_join(client, helper, target, topic):
    """When a second member joins, the group rebalances: the partitions are split between both members,
    each partition assigned to exactly one member."""
    needs(client, "groups", target.bootstrap, GROUP_APIS)
    helper.create_topic(topic, 4)
    group = _group()
    a = client.group_member(group, [topic])
    b = None
    try:
        _drive([a], lambda g: len(a.assignment()) == 4, message="the first member to own all 4 partitions")
        b = client.group_member(group, [topic])
        _drive([a, b], lambda g: _split(a, b, topic, 4), message="a rebalance splitting 4 partitions over 2 members")
    finally:
        for m in (b, a):
            if m is not None:
                m.close()


def test_group_rebalance_on_leave(client, helper, target, topic):
    """When a member leaves (LeaveGroup on close), the group rebalances and the remaining member is assigned
    every partition again."""
    needs(client, "groups", target.bootstrap, GROUP_APIS)
    helper.create_topic(topic, 4)
    group = _group()
    a = client.group_member(group, [topic])
    b = client.group_member(group, [topic])
    try:
        _drive([a, b], lambda g: _split(a, b, topic, 4), message="both members to own partitions")
        b.close()
        b = None
        _drive([a], lambda g: len(a.assignment()) == 4, message="the remaining member to own all 4 partitions")
    finally:
        for m in (b, a):
            if m is not None:
                m.close()


def test_group_commit_and_resume(client, helper, target, topic):
    """An offset committed for a group (OffsetCommit) is returned by OffsetFetch and a later member of the
    same group resumes from it, not from the beginning."""
    needs(client, "groups", target.bootstrap, GROUP_APIS)
    helper.create_topic(topic, 1)
    helper.produce(topic, [Rec(value=f"v{i}".encode()) for i in range(10)])
    group = _group()
    tp = (topic, 0)
    a = client.group_member(group, [topic])
    try:
        got = _drive([a], lambda g: len(g[id(a)]) >= 6, message="the first member to read 6 records")
        assert [r.offset for r in got[id(a)][:6]] == list(range(6))
        a.commit({tp: 6})
        assert a.committed(tp) == 6
    finally:
        a.close()
    b = client.group_member(group, [topic])
    try:
        got = _drive([b], lambda g: len(g[id(b)]) >= 4, message="the second member to read from the commit")
        assert [(r.offset, r.value) for r in got[id(b)]] == [(i, f"v{i}".encode()) for i in range(6, 10)]
    finally:
        b.close()

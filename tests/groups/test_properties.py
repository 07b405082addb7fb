"""Property: after any sequence of joins, syncs, heartbeats, leaves, restarts and time passing,
- a group with members has a leader among them (and none without members);
- in CompletingRebalance and Stable every member was told the group's current generation and
  nobody waits in a JoinGroup;
- in Stable every member holds the assignment the leader gave for that generation;
- every member not waiting in a request has a session (heartbeat) deadline;
and once every client goes away, the group ends Empty with every request answered."""
from __future__ import annotations

from groups_harness import E, Harness
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.groups import GroupState

S = GroupState
N = 4
TOPICS = [("t",), ("t", "u"), ("u",)]


class Client:
    def __init__(self, h, i, delivered, handles):
        self.h, self.i, self.delivered, self.handles = h, i, delivered, handles
        self.reset()

    def reset(self):
        self.member_id = ""
        self.gen = -1
        self.join_p = None
        self.sync_p = None
        self.join_result = None

    def busy(self):
        return (self.join_p is not None and not self.join_p.done) or \
            (self.sync_p is not None and not self.sync_p.done)

    def join(self, topics):
        if self.busy():
            return
        p = self.h.join("g", self.member_id, client_id=f"c{self.i}", topics=topics,
                        session=10_000, rebalance=12_000)
        self.join_p = p
        self.handles.append(p)
        me = self

        def done(p):
            r = p.result
            if r.error == E.NONE:  # delivered, even if the client restarted meanwhile
                me.delivered[r.member_id] = r.generation_id
            if me.join_p is not p:
                return
            if r.error == E.NONE:
                me.member_id, me.gen, me.join_result = r.member_id, r.generation_id, r
            elif r.error == E.MEMBER_ID_REQUIRED:
                me.member_id = r.member_id
            elif r.error == E.UNKNOWN_MEMBER_ID:
                me.member_id, me.gen = "", -1
        p.add_done_callback(done)

    def sync(self):
        r = self.join_result
        if self.busy() or r is None or r.member_id != self.member_id or r.generation_id != self.gen:
            return
        assignments = {m.member_id: f"{m.member_id}@{r.generation_id}".encode()
                       for m in r.members} if r.leader == self.member_id else {}
        self.sync_p = self.h.sync("g", self.gen, self.member_id, assignments)
        self.handles.append(self.sync_p)

    def heartbeat(self):
        if self.busy() or not self.member_id:
            return
        err = self.h.coord.heartbeat("g", self.gen, self.member_id)
        if err == E.UNKNOWN_MEMBER_ID:
            self.member_id, self.gen = "", -1

    def leave(self):
        if self.busy() or not self.member_id:
            return
        self.h.coord.leave_group("g", [(self.member_id, None)])
        self.reset()


_join = st.tuples(st.just("join"), st.integers(0, N - 1), st.sampled_from(TOPICS))
_sync = st.tuples(st.just("sync"), st.integers(0, N - 1))
_heartbeat = st.tuples(st.just("heartbeat"), st.integers(0, N - 1))
op = st.one_of(  # joins, syncs and heartbeats weigh more: they build up stable groups
    _join, _join, _join, _sync, _sync, _sync, _heartbeat, _heartbeat,
    st.tuples(st.just("leave"), st.integers(0, N - 1)),
    st.tuples(st.just("restart"), st.integers(0, N - 1)),
    st.tuples(st.just("advance"), st.sampled_from([500, 3_000, 9_000, 11_000, 31_000])),
)


def check_invariants(h, delivered):
    for g in h.coord.groups.values():
        if g.members:
            assert g.leader_id in g.members
        else:
            assert g.leader_id is None
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE):
            for mid, m in g.members.items():
                assert delivered.get(mid) == g.generation_id, (mid, g.generation_id)
                assert not m.awaiting_join
        if g.is_(S.STABLE):
            for mid, m in g.members.items():
                assert m.assignment == f"{mid}@{g.generation_id}".encode()
        for mid, m in g.members.items():
            if not m.awaiting_join and not m.awaiting_sync:
                assert ("heartbeat", g.group_id, mid) in h.coord.timers


def run(ops, initial_delay):
    h = Harness(group_initial_rebalance_delay_ms=initial_delay)
    delivered: dict[str, int] = {}
    handles = []
    clients = [Client(h, i, delivered, handles) for i in range(N)]
    stable_sizes = set()
    for o in ops:
        kind = o[0]
        if kind == "advance":
            h.advance(o[1])
        elif kind == "join":
            clients[o[1]].join(o[2])
        elif kind == "restart":
            clients[o[1]].reset()  # the old member id lingers until its session expires
        else:
            getattr(clients[o[1]], kind)()
        check_invariants(h, delivered)
        g = h.coord.groups.get("g")
        if g is not None and g.is_(S.STABLE):
            stable_sizes.add(len(g.members))
    # everyone goes away: sessions, rebalance and sync timeouts clean the group up
    for _ in range(150):
        h.advance(5_000)
        check_invariants(h, delivered)
    g = h.coord.groups.get("g")
    assert g is None or (g.is_(S.EMPTY) and not g.members)
    assert all(p.done for p in handles)
    return stable_sizes


@settings(max_examples=80, deadline=None)
@given(st.lists(op, min_size=10, max_size=80), st.sampled_from([0, 3000]))
def test_any_sequence_keeps_groups_consistent(ops, initial_delay):
    run(ops, initial_delay)


def test_seeded_random_sequences_keep_groups_consistent_and_reach_stable_groups():
    import random
    seen = set()
    for seed in range(120):
        rnd = random.Random(seed)
        ops = []
        for _ in range(80):
            kind = rnd.choice(["join", "join", "sync", "sync", "heartbeat", "heartbeat",
                               "leave", "restart", "advance"])
            if kind == "advance":
                ops.append((kind, rnd.choice([500, 3_000, 9_000, 11_000, 31_000])))
            elif kind == "join":
                ops.append((kind, rnd.randrange(N), rnd.choice(TOPICS)))
            else:
                ops.append((kind, rnd.randrange(N)))
        seen |= run(ops, rnd.choice([0, 3000]))
    assert {1, 2, 3} <= seen  # the walk really builds multi-member stable groups

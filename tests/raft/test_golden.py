"""Golden interaction scripts for the tricky cases (tests/raft/golden/*.txt).

A tiny DSL drives a :class:`sim.Manual` cluster (per-node clocks, explicit message queues,
immediate flushes; every invariant of the simulation is checked after each action):

    config voters=3 observers=0 snapshot_every=0 seed=0
    tick <node|*> <ms>               advance a node's clock and fire its timers
    deliver <src|*>-><dst|*> [n]     deliver queued messages (all, or n per queue)
    drop <src|*>-><dst|*>            lose queued messages
    stabilize                        deliver everything until no message is left
    run <ms>                         every clock advances in 10 ms steps, messages flow at once
    partition 1 | 2 3                only nodes in one group talk; heal
    crash N / restart N              crash loses nothing unflushed here (flushes are immediate)
    propose <N|leader> rec...        one entry per record
    snapshot <N|leader|*>            the state machine's image at its applied offset
    expect role N <role>             unattached voted prospective candidate leader follower resigned
    expect epoch <N|*> E
    expect leader <N|any|a,b> epoch <E|>E>   that node leads (the only live leader) in that epoch
    expect no-leader
    expect hw <N|*> <X|leader>
    expect log N <epochs...>         epochs of N's entries from its log start (``-`` for none)
    expect log-start N X
    expect records N rec...          N's non-control records from its log start
    expect same-log                  every live node's log equals the leader's
    expect queued <src>-><dst> <Type>  a message of that type is waiting
    expect truncated N X             N's log was truncated to X (the last truncation)
    expect installed N X             N installed a leader's snapshot ending at X
    expect applied <N|*> X           N's state machine has applied every offset below X
    show                             print the cluster (debugging)
"""
from __future__ import annotations

import pathlib
import shlex

import pytest

from kwire.raft.core import Role

from .sim import InvariantViolation, Manual

GOLDEN = pathlib.Path(__file__).parent / "golden"
SCRIPTS = sorted(GOLDEN.glob("*.txt"))


class ScriptError(AssertionError):
    pass


def _pairs(m: Manual, spec: str) -> list[tuple[int, int]]:
    src, dst = spec.split("->")
    ids = m.cluster.ids
    srcs = ids if src == "*" else [int(src)]
    dsts = ids if dst == "*" else [int(dst)]
    return [(s, d) for s in srcs for d in dsts if s != d]


def _nodes(m: Manual, spec: str) -> list[int]:
    if spec == "*":
        return [i for i in m.cluster.ids if m.cluster.nodes[i].alive]
    if spec == "leader":
        ldr = m.cluster.leader()
        if ldr is None:
            raise ScriptError("no leader")
        return [ldr.id]
    return [int(x) for x in spec.split(",")]


def _show(m: Manual) -> str:
    out = []
    for n in m.cluster.nodes.values():
        if not n.alive:
            out.append(f"  {n.id}: down")
            continue
        c = n.core
        out.append(f"  {n.id}: {c.role.value} epoch={c.epoch} leader={c.leader_id} voted={c.voted_id} "
                   f"hw={c.high_watermark} log=[{c.log.start_offset},{c.log.end_offset}) "
                   f"epochs={[e.epoch for e in c.log.entries(c.log.start_offset)]} applied={n.sm_offset} "
                   f"clock={m.clock[n.id]}")
    out.append("  queued: " + ", ".join(f"{s}->{d} {type(msg).__name__}" for s, d, msg in m.pending()))
    return "\n".join(out)


def run_script(text: str, name: str = "<script>") -> Manual:
    lines = text.splitlines()
    m: Manual | None = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = shlex.split(line)
        cmd, args = words[0], words[1:]
        if cmd == "config":
            kw = dict(a.split("=") for a in args)
            m = Manual(voters=int(kw.get("voters", 3)), observers=int(kw.get("observers", 0)),
                       seed=int(kw.get("seed", 0)), snapshot_every=int(kw.get("snapshot_every", 0)))
            continue
        if m is None:
            m = Manual()
        try:
            _execute(m, cmd, args)
        except (ScriptError, InvariantViolation, AssertionError) as e:
            raise ScriptError(f"{name}:{lineno}: {line}\n  {e}\n{_show(m)}") from None
    return m


def _execute(m: Manual, cmd: str, args: list[str]) -> None:
    c = m.cluster
    if cmd == "tick":
        for nid in _nodes(m, args[0]):
            m.tick(nid, int(args[1]))
    elif cmd == "deliver":
        count = int(args[1]) if len(args) > 1 else None
        for s, d in _pairs(m, args[0]):
            m.deliver(s, d, count)
    elif cmd == "drop":
        for s, d in _pairs(m, args[0]):
            m.drop(s, d)
    elif cmd == "stabilize":
        m.stabilize()
    elif cmd == "run":
        m.run(int(args[0]))
    elif cmd == "partition":
        groups, cur = [], []
        for a in args:
            if a == "|":
                groups.append(cur)
                cur = []
            else:
                cur.append(int(a))
        groups.append(cur)
        m.partition(groups)
    elif cmd == "heal":
        m.heal()
    elif cmd == "crash":
        m.crash(int(args[0]))
    elif cmd == "restart":
        m.restart(int(args[0]))
    elif cmd == "propose":
        (nid,) = _nodes(m, args[0])
        for rec in args[1:]:
            m.propose(nid, rec)
    elif cmd == "snapshot":
        for nid in _nodes(m, args[0]):
            m.snapshot(nid)
    elif cmd == "show":
        print(_show(m))
    elif cmd == "expect":
        _expect(m, args)
    else:
        raise ScriptError(f"unknown command {cmd!r}")


def _expect(m: Manual, args: list[str]) -> None:
    c = m.cluster
    what, rest = args[0], args[1:]

    def check(cond: bool, msg: str) -> None:
        if not cond:
            raise ScriptError(f"expectation failed: {msg}")

    if what == "role":
        n = c.nodes[int(rest[0])]
        check(n.alive and n.core.role == Role(rest[1]), f"node {rest[0]} is {n.core.role.value if n.alive else 'down'}")
    elif what == "epoch":
        for nid in _nodes(m, rest[0]):
            check(c.nodes[nid].core.epoch == int(rest[1]), f"node {nid} epoch {c.nodes[nid].core.epoch}")
    elif what == "leader":
        assert rest[1] == "epoch"
        leaders = [n for n in c.nodes.values() if n.alive and n.core.role == Role.LEADER]
        newest = max(leaders, key=lambda n: n.core.epoch, default=None)
        check(newest is not None, "no leader")
        if rest[0] != "any":
            check(newest.id in [int(x) for x in rest[0].split(",")], f"leader is {newest.id}")
        e = rest[2]
        ok = newest.core.epoch > int(e[1:]) if e.startswith(">") else newest.core.epoch == int(e)
        check(ok, f"leader epoch {newest.core.epoch}")
        check(sum(1 for n in leaders if n.core.epoch == newest.core.epoch) == 1, "two leaders")
    elif what == "no-leader":
        check(c.leader() is None, f"node {c.leader() and c.leader().id} leads")
    elif what == "hw":
        target = c.leader().core.high_watermark if rest[1] == "leader" else int(rest[1])
        for nid in _nodes(m, rest[0]):
            check(c.nodes[nid].core.high_watermark == target, f"node {nid} HW {c.nodes[nid].core.high_watermark}"
                                                               f" != {target}")
    elif what == "log":
        core = c.nodes[int(rest[0])].core
        got = [str(e.epoch) for e in core.log.entries(core.log.start_offset)]
        want = [] if rest[1:] == ["-"] else rest[1:]
        check(got == want, f"node {rest[0]} log epochs {got}")
    elif what == "log-start":
        core = c.nodes[int(rest[0])].core
        check(core.log.start_offset == int(rest[1]), f"node {rest[0]} log start {core.log.start_offset}")
    elif what == "records":
        core = c.nodes[int(rest[0])].core
        got = [e.records for e in core.log.entries(core.log.start_offset) if not e.control]
        check(got == rest[1:], f"node {rest[0]} records {got}")
    elif what == "same-log":
        ldr = c.leader()
        check(ldr is not None, "no leader")
        want = ldr.core.log.entries(ldr.core.log.start_offset)
        for n in c.nodes.values():
            if n.alive and n is not ldr:
                start = max(n.core.log.start_offset, ldr.core.log.start_offset)
                got = n.core.log.entries(start)
                check(n.core.log.end_offset == ldr.core.log.end_offset
                      and got == ldr.core.log.entries(start), f"node {n.id} log differs from leader {ldr.id}")
        check(bool(want) or ldr.core.log.end_offset == ldr.core.log.start_offset, "")
    elif what == "queued":
        (s, d), = _pairs(m, rest[0])
        names = [type(msg).__name__ for msg in m.queues.get((s, d), ())]
        check(rest[1] in names, f"{rest[0]} has {names}")
    elif what == "truncated":
        n = c.nodes[int(rest[0])]
        check(bool(n.truncations) and n.truncations[-1] == int(rest[1]), f"node {rest[0]} truncations {n.truncations}")
    elif what == "installed":
        n = c.nodes[int(rest[0])]
        check(any(s.offset == int(rest[1]) for s in n.installs), f"node {rest[0]} installed {n.installs}")
    elif what == "applied":
        for nid in _nodes(m, rest[0]):
            check(c.nodes[nid].sm_offset == int(rest[1]), f"node {nid} applied up to {c.nodes[nid].sm_offset}")
    else:
        raise ScriptError(f"unknown expectation {what!r}")


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_golden(path: pathlib.Path) -> None:
    m = run_script(path.read_text(), path.name)
    m.cluster.check(full=True)


def test_golden_scripts_exist() -> None:
    assert {p.stem for p in SCRIPTS} >= {"split_vote", "isolated_leader", "diverging_log", "snapshot_install"}


def test_a_wrong_expectation_fails() -> None:
    with pytest.raises(ScriptError):
        run_script("config voters=3\ntick 1 2000\nstabilize\nexpect leader 2 epoch 1\n")

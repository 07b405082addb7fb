"""kwire's layers and import cycles (issue 31): the import-linter contract in pyproject.toml
([tool.importlinter]: codec < log < raft < metadata < replication < coordinator (what the
coordinators share) < groups/transactions/share < broker < handlers < server < app <
admin/spark < cli < testing) holds, and kwire's modules import each other without cycles,
function-local imports counted (grimp sees every import statement). A cycle allowed for a while
is listed in KNOWN_CYCLES with where it goes; a new one fails, and so does a listed one that has
gone (the list only shrinks; it is empty now)."""
from __future__ import annotations

import logging
import pathlib
import sys

import grimp
from importlinter.cli import lint_imports

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The cycles left, each to go with the work named beside it (none now: a new one fails).
KNOWN_CYCLES: set[frozenset[str]] = set()


def _cycles(graph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: set[frozenset[str]] = set()
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.add(frozenset(comp))
    return out


def test_the_layer_contract_holds(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    # lint_imports configures its logging with dictConfig, which disables every logger that
    # exists (disable_existing_loggers): kwire's loggers would stay off for the tests that run
    # after this one in the process, and their caplog checks would fail
    loggers = [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    was = [(lg, lg.disabled) for lg in loggers]
    try:
        result = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    finally:
        for lg, disabled in was:
            lg.disabled = disabled
    assert result == 0, "a layer contract is broken: run `lint-imports` for the import chain"


def test_no_import_cycles_but_the_listed_ones():
    sys.path.insert(0, str(ROOT))
    try:
        graph = grimp.build_graph("kwire", include_external_packages=False, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    found = _cycles(graph)
    new = [sorted(c) for c in found - KNOWN_CYCLES]
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not new, f"new import cycles (function-local imports count): {new}"
    assert not gone, f"listed cycles that are gone or changed: drop or update them in KNOWN_CYCLES: {gone}"


def test_the_cycle_finder_finds_a_cycle():
    class Graph:
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges.get(m, set())
    assert _cycles(Graph()) == {frozenset({"a", "b", "c"})}

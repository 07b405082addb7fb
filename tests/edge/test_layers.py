"""kwire's layers and import cycles (issue 31): the import-linter contract in pyproject.toml
([tool.importlinter]: codec < log < raft < metadata < replication < coordinator (what the
coordinators share) < groups/transactions/share < broker < handlers < server < app <
admin/spark < cli < testing) holds, and kwire's modules import each other without cycles,
function-local imports counted (grimp sees every import statement). A cycle allowed for a while
is listed in KNOWN_CYCLES with where it goes; a new one fails, and so does a listed one that has
gone (the list only shrinks; it is empty now).

A function-local import says why it is not at the top of its module, on its own line:
``# noqa: PLC0415 - <reason>`` (start-up time and what it saves, an optional dependency, a
platform that may lack the module). A reason that names a cycle is refused: there are none to
hide (see above), so such an import belongs at the top."""
from __future__ import annotations

import ast
import logging
import pathlib
import re
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


# ``# noqa: PLC0415 - <reason>`` (other codes may come first: ``# noqa: F401, PLC0415 - ...``)
_REASON = re.compile(r"#\s*noqa:[^#\n]*\bPLC0415 - (\S[^#\n]*)")


def _unexplained(source: str) -> list[tuple[int, str]]:
    """(line, why) of each import inside a function (or a class in one) whose lines carry no
    ``# noqa: PLC0415 - <reason>``, or whose reason is a cycle."""
    lines = source.splitlines()
    out = []

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                text = "\n".join(lines[child.lineno - 1:child.end_lineno])
                m = _REASON.search(text)
                if m is None:
                    out.append((child.lineno, "no '# noqa: PLC0415 - <reason>'"))
                elif "cycle" in m.group(1).lower():
                    out.append((child.lineno, "a cycle is no reason: there are none; import it at the top"))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(source), False)
    return out


def test_every_function_local_import_says_why():
    """Each import inside a function in kwire/ (issue 31) carries ``# noqa: PLC0415 - <reason>``
    on one of its lines, the reason not empty and no cycle; ruff's PLC0415 is the rule that
    import-outside-toplevel breaks. Where a module's imports share one reason, its docstring
    says it once and the lines carry a short tag ("start-up time (module doc)")."""
    found = []
    for path in sorted((ROOT / "kwire").rglob("*.py")):
        for line, why in _unexplained(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    assert not found, ("function-local imports without a reason (move them to the top, or say why "
                       "they wait):\n" + "\n".join(found))


def test_the_reason_check_finds_a_bare_import():
    source = """
import os  # module level: nothing to say


def f():
    import bisect
    import json  # noqa: PLC0415
    import zlib  # noqa: PLC0415 -
    from a import b  # noqa: PLC0415 - start-up time: ~40 ms, SASL only
    from c import (  # noqa: F401, PLC0415 - optional dependency: c
        d, e)
    from g import (h,  # noqa: PLC0415 - layer rule: g sits above f
                   i)
    import k  # noqa: PLC0415 - import cycle

    class Inner:
        def m(self):
            import csv

    def inner():
        from x import y
"""
    assert [line for line, _ in _unexplained(source)] == [6, 7, 8, 14, 18, 21]

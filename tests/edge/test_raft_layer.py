"""raft/ is consensus only: no module under kwire/raft imports a layer above it, at module
level or inside a function (issue 31: the controller's server lives in kwire.metadata, and
what raft needs from above, such as the peer link, is passed in at construction)."""
from __future__ import annotations

import ast
import pathlib

import kwire

ABOVE = ("metadata", "handlers", "broker", "groups", "replication", "quota", "security", "transactions", "share")
FORBIDDEN = tuple(f"kwire.{name}" for name in ABOVE)
RAFT = pathlib.Path(kwire.__file__).parent / "raft"


def _imported(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``tree``, in any scope; relative imports resolved
    against ``package``; ``importlib.import_module("...")`` / ``__import__("...")`` too."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("import_module", "__import__"):
                out.append((node.lineno, node.args[0].value))
    return out


def _upward(source: str, package: str = "kwire.raft") -> list[tuple[int, str]]:
    """(line, module) of the imports of a layer above raft: the first such module per line."""
    hits: dict[int, str] = {}
    for line, mod in _imported(ast.parse(source), package):
        if mod in FORBIDDEN or mod.startswith(tuple(f + "." for f in FORBIDDEN)):
            hits.setdefault(line, mod)
    return sorted(hits.items())


def test_the_check_sees_every_kind_of_import():
    src = ("import kwire.broker\n"
           "from kwire.metadata.quorum import TopicOutcome\n"
           "def f():\n    from kwire.security.peers import PeerLink\n"
           "class C:\n    def m(self):\n        from ..handlers import produce\n"
           "def g():\n    import importlib\n    return importlib.import_module('kwire.groups.edge')\n"
           "from kwire import replication\n"
           "from kwire.raft.log import Entry\nimport kwire.metadataish\n")
    assert {m for _, m in _upward(src)} == {"kwire.broker", "kwire.metadata.quorum", "kwire.security.peers",
                                            "kwire.handlers", "kwire.groups.edge", "kwire.replication"}


def test_no_module_under_raft_imports_a_layer_above():
    files = sorted(RAFT.glob("*.py"))
    assert {p.name for p in files} >= {"core.py", "driver.py", "transport.py"}
    bad = [f"kwire/raft/{p.name}:{line}: {mod}" for p in files for line, mod in _upward(p.read_text())]
    assert not bad, "raft/ imports a layer above it:\n" + "\n".join(bad)

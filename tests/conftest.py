"""Suite-wide hooks."""
from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup``: send the tests of one ``xdist_group`` to one worker (the Spark
    tests share one SparkSession that way). pytest-xdist 3.8 marks them by rewriting
    ``item._nodeid``, which pytest 9.2 no longer reads (node ids live in ``item._id``), so the
    groups were silently ignored; this does the same marking where xdist's did not take."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if "@" in item.nodeid:
            continue
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names:
            continue
        suffixed = f"{item.nodeid}@{'_'.join(names)}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId
            item._id = NodeId.parse(suffixed)
        else:
            item._nodeid = suffixed
